DROP TABLE idempotent_writes;
