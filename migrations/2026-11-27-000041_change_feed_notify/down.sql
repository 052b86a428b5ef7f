DROP TRIGGER change_log_notify ON change_log;
DROP FUNCTION change_log_notify();
