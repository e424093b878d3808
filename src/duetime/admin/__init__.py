"""Operations the command line and the dashboard share: acting on every task of a type,
and the task types a store holds."""
