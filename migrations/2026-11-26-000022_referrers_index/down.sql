CREATE INDEX property_values_user_reference ON property_values (db, reference)
    WHERE deleted_at IS NULL AND reference IS NOT NULL AND prop NOT LIKE '\_%';
DROP INDEX property_values_referrers;
