-- leave: delete a worker's record (it stopped).
-- Parameters: %(namespace)s, %(id)s.
DELETE FROM workers WHERE namespace = %(namespace)s AND id = %(id)s
