DROP TABLE property_values;
DROP TABLE entities;
DROP TABLE databases;
