ALTER TABLE property_values RESET (autovacuum_vacuum_insert_scale_factor);
ALTER TABLE entities RESET (autovacuum_vacuum_insert_scale_factor);
