ALTER TABLE webhook_outbox DROP COLUMN message_id;
