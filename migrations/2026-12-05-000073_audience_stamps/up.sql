-- A stamp per database, drawn afresh whenever an audience is added to it
-- (audiences are never removed while the database lives). A process that
-- resolved which audiences a caller may read keeps the ids with the stamp
-- they were read with, binds them into a list query's page statement, and
-- that statement checks in its own snapshot that the stamp is still the
-- database's: a new audience the caller may read is then never missed. A
-- random stamp, not a counter, so that a database deleted and created again,
-- or moved to another cluster, never repeats one.
CREATE TABLE audience_stamps (
    db    text   PRIMARY KEY REFERENCES databases (name),
    stamp bigint NOT NULL
);

CREATE FUNCTION fresh_audience_stamp() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT (random() * 9.2e18)::bigint
$$;

INSERT INTO audience_stamps (db, stamp)
    SELECT db, fresh_audience_stamp() FROM (SELECT DISTINCT db FROM audiences) d;

-- A row trigger: it fires for the rows an insert adds, not for those its
-- `ON CONFLICT DO NOTHING` skips, so a write that finds its audience known
-- (nearly all) pays nothing.
CREATE FUNCTION audience_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audience_stamps (db, stamp) VALUES (NEW.db, fresh_audience_stamp())
        ON CONFLICT (db) DO UPDATE SET stamp = EXCLUDED.stamp;
    RETURN NULL;
END
$$;
CREATE TRIGGER audiences_stamped AFTER INSERT ON audiences
    FOR EACH ROW EXECUTE FUNCTION audience_added();
