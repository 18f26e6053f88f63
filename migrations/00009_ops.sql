-- +goose Up
-- A webhook delivery task that runs again (a late second enqueue, a worker
-- that died after the receiver answered) asks whether the endpoint already
-- accepted the message before sending it again.
CREATE INDEX webhook_deliveries_message_idx ON webhook_deliveries (endpoint_id, message_id);

-- +goose Down
DROP INDEX webhook_deliveries_message_idx;
