DROP TRIGGER property_values_updated ON property_values;
DROP TRIGGER property_values_inserted ON property_values;
DROP FUNCTION property_values_updated();
DROP FUNCTION property_values_inserted();
DROP TABLE property_multiplicity;
