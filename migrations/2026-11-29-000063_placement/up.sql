-- Where each database lives, on the home cluster: a database with no row
-- here lives on the home cluster itself. Written by `eds db create
-- --cluster`, the `database.placement` seed and `eds db move`; every change
-- is announced on `eds_placement` (the row's database), and processes also
-- reread the table every few seconds.
CREATE TABLE placements (
    db          text        PRIMARY KEY,
    cluster_url text        NOT NULL,
    placed_at   timestamptz NOT NULL DEFAULT now()
);

-- Set on the old copy of a moved database, in the transaction that holds
-- its write lock while it is copied: a writer that takes the lock later
-- finds no live database there and writes on the new cluster instead. The
-- copy is removed once every process follows the move.
ALTER TABLE databases ADD COLUMN moved_at timestamptz;
