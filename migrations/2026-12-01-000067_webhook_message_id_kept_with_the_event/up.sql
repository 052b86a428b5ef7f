-- A webhook event's message id (`Webhook-Id`, the body's `id`) is kept
-- with its outbox row: it was the row's number, which a database's move
-- to another cluster draws anew, so a retry after a move reached receivers
-- as a new message. Rows waiting now keep the id they were sent with.
ALTER TABLE webhook_outbox ADD COLUMN message_id text;
UPDATE webhook_outbox SET message_id = 'msg_' || id;
ALTER TABLE webhook_outbox
    ALTER COLUMN message_id SET DEFAULT 'msg_' || replace(gen_random_uuid()::text, '-', ''),
    ALTER COLUMN message_id SET NOT NULL;
