-- +goose Up
-- The brand's partner listing reads a program's enrollments newest first
-- (partner id breaks ties) and cuts a page or a CSV batch from them; the
-- primary key (program_id, partner_id) cannot give that order, so without
-- this index every page sorted all of the program's enrollments.
CREATE INDEX enrollments_program_listing_idx ON enrollments (program_id, created_at DESC, partner_id DESC);

-- +goose Down
DROP INDEX enrollments_program_listing_idx;
