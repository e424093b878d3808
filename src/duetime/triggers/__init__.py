"""What makes work due: one module per kind of trigger, behind the seam in ``base``."""
