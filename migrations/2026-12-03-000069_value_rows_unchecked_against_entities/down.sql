ALTER TABLE property_values
    ADD CONSTRAINT property_values_db_entity_id_fkey FOREIGN KEY (db, entity_id) REFERENCES entities (db, id);
