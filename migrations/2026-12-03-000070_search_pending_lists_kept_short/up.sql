-- A trigram index keeps new entries in a pending list that every search
-- reads through whole, and the insert that finds the list past its limit
-- moves it into the index, inside the writer's transaction. At the default
-- 4 MB, after 20,000 creates each search read megabytes of it, and the
-- move held the database's writer for as long. At 256 kB, alternating runs
-- on the same data: creates from 32 clients 2,081-2,347 -> 2,600-2,995
-- requests/s, and a mixed load of reads (a quarter of them searches) with
-- creates 1,034-1,272 -> 1,389-1,437 requests/s.
ALTER INDEX entities_search_private SET (gin_pending_list_limit = 256);
ALTER INDEX entities_search_domain SET (gin_pending_list_limit = 256);
ALTER INDEX entities_search_public SET (gin_pending_list_limit = 256);
