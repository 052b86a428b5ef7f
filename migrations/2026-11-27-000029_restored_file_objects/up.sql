-- A file value written again by a restore keeps pointing at the stored
-- object of the value it restores: `object_id` names that value (the object
-- is `<db>/<entity id>/<object_id>`). NULL: the value's own object.
ALTER TABLE property_values ADD COLUMN object_id text;
