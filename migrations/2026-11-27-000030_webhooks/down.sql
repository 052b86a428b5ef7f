DROP TRIGGER webhook_outbox_fill ON change_log;
DROP FUNCTION webhook_outbox_fill();
DROP FUNCTION webhook_refresh(text, text);
DROP TABLE webhook_attempts;
DROP TABLE webhook_outbox;
DROP TABLE webhooks;
