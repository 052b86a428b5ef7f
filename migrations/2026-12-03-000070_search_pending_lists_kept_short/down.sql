ALTER INDEX entities_search_private RESET (gin_pending_list_limit);
ALTER INDEX entities_search_domain RESET (gin_pending_list_limit);
ALTER INDEX entities_search_public RESET (gin_pending_list_limit);
