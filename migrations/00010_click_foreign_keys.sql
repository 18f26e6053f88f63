-- +goose Up
-- Clicks and visits are the high-volume tables: every inserted row fired a
-- foreign-key check per reference, each taking a FOR KEY SHARE lock on
-- the program's row, which concurrent batch writers of one busy program
-- all share (multixacts). The batch insert joins programs, partners and
-- links itself (a click of a program that is gone is dropped, a partner or
-- link that is gone is stored as NULL), and the service deletes none of
-- them, so the checks bought nothing: without them a batch writes about a
-- third faster (BenchmarkWriteClicks, docs/decisions.md "Performance").
ALTER TABLE clicks
    DROP CONSTRAINT clicks_program_id_fkey,
    DROP CONSTRAINT clicks_partner_id_fkey,
    DROP CONSTRAINT clicks_link_id_fkey;
ALTER TABLE visits DROP CONSTRAINT visits_program_id_fkey;

-- +goose Down
ALTER TABLE visits ADD CONSTRAINT visits_program_id_fkey
    FOREIGN KEY (program_id) REFERENCES programs (id) ON DELETE CASCADE;
ALTER TABLE clicks
    ADD CONSTRAINT clicks_program_id_fkey FOREIGN KEY (program_id) REFERENCES programs (id) ON DELETE CASCADE,
    ADD CONSTRAINT clicks_partner_id_fkey FOREIGN KEY (partner_id) REFERENCES partners (id) ON DELETE SET NULL,
    ADD CONSTRAINT clicks_link_id_fkey FOREIGN KEY (link_id) REFERENCES links (id) ON DELETE SET NULL;
