-- Wakes the change feed's log readers: a notification per database a
-- statement logged changes of, sent at commit (PostgreSQL folds repeats of
-- one payload within a transaction). It only wakes; the log carries the data.
CREATE FUNCTION change_log_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed text;
BEGIN
    FOR changed IN SELECT DISTINCT db FROM logged LOOP
        PERFORM pg_notify('eds_changes', changed);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER change_log_notify AFTER INSERT ON change_log
    REFERENCING NEW TABLE AS logged
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_notify();
