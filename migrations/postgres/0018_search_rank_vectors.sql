-- Ranking a search's matches without tokenising them again.
--
-- The keyed vectors of 0013 exist only as index expressions, so ranking a match (`ts_rank`) had to
-- rebuild the row's vector from its terms: ~40 µs a row, 80 of the 120 ms a word in 1% of the threads
-- took for a user with 100,000 threads (2,000 matching messages, 1,000 titles). The rows now keep
-- their words as a stored vector, without the user's key: the same lexemes in the same positions and
-- weights as the keyed vector (a key is one run of hex and `x` in front of each word), so the rank is
-- the same. Matching still goes through the keyed indexes; a rename, which rewrites `title_terms`,
-- recomputes the column. Unkeyed, the stored vector is about a sixth of the keyed one's size.
ALTER TABLE messages ADD COLUMN rank_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, title_terms), 'A')
    || to_tsvector('simple'::regconfig, search_terms)
) STORED;

ALTER TABLE threads ADD COLUMN rank_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, title_terms), 'A')
) STORED;
