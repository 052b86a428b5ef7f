DROP INDEX property_values_deleted_by;
DROP INDEX property_values_written_by;
