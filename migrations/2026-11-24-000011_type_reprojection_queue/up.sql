-- Entity types whose entities must be re-projected because a definition or
-- the type's own sharing changed in a way that lets no fewer see anything
-- (a narrowing is re-projected in the write's own transaction). A worker
-- re-projects a batch at a time in id order, each batch its own short
-- transaction, and records how far it got, so writes to the database wait
-- for at most one batch and a restart resumes where it stopped. Rows are only
-- ever inserted by writes: a later change to the same type adds a row, which
-- supersedes the earlier one (it starts from the beginning).
CREATE TABLE type_reprojections (
    id           bigserial   PRIMARY KEY,
    db           text        NOT NULL REFERENCES databases (name),
    type_id      text        NOT NULL,
    -- the entities of the type with ids up to this one are re-projected
    done_through text        NOT NULL DEFAULT '',
    queued_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX type_reprojections_type ON type_reprojections (db, type_id);
