DROP INDEX property_values_passkeys;
