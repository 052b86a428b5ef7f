DROP TRIGGER audiences_stamped ON audiences;
DROP FUNCTION audience_added();
DROP TABLE audience_stamps;
DROP FUNCTION fresh_audience_stamp();
