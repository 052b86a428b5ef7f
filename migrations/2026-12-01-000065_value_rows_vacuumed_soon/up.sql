-- Filters, sorts and counts decide from the value indexes alone (index-only
-- scans) only on heap pages marked all-visible, and only VACUUM marks them.
-- By default autovacuum comes after inserts of a fifth of a table's rows: a
-- table of a million value rows then leaves up to 200,000 freshly written
-- rows whose every match costs a heap visit (measured: a range count of
-- 1,135 matches took 171 of them). A vacuum after 1% keeps that tail short;
-- each one passes only the pages written since the last.
ALTER TABLE property_values SET (autovacuum_vacuum_insert_scale_factor = 0.01);
ALTER TABLE entities SET (autovacuum_vacuum_insert_scale_factor = 0.01);
