DROP TRIGGER number_values_updated ON property_values;
DROP TRIGGER number_values_inserted ON property_values;
DROP FUNCTION number_values_updated();
DROP FUNCTION number_values_inserted();
DROP TABLE number_tallies;
DROP FUNCTION number_bucket(double precision);
