// Diesel table definitions matching `migrations/` (as `diesel print-schema` writes them).

diesel::table! {
    databases (name) {
        name -> Text,
        created_at -> Timestamptz,
        generation -> Int8,
        created_by_login -> Nullable<Text>,
        entity_id -> Nullable<Text>,
        moved_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    placements (db) {
        db -> Text,
        cluster_url -> Text,
        placed_at -> Timestamptz,
    }
}

diesel::table! {
    entities (db, id) {
        db -> Text,
        id -> Text,
        created_at -> Timestamptz,
        created_by -> Nullable<Text>,
        deleted_at -> Nullable<Timestamptz>,
        deleted_by -> Nullable<Text>,
        type_id -> Nullable<Text>,
        parent_ids -> Array<Text>,
        name -> Nullable<Text>,
        sharing -> Text,
        inherit_rights -> Bool,
        owners -> Array<Text>,
        editors -> Array<Text>,
        expanders -> Array<Text>,
        viewers -> Array<Text>,
        noaccess -> Array<Text>,
        doc -> Jsonb,
        public_props -> Array<Text>,
        domain_props -> Array<Text>,
        search_private -> Text,
        search_domain -> Text,
        search_public -> Text,
        audience -> Int8,
    }
}

diesel::table! {
    property_values (db, id) {
        db -> Text,
        id -> Text,
        entity_id -> Text,
        prop -> Text,
        string -> Nullable<Text>,
        number -> Nullable<Float8>,
        boolean -> Nullable<Bool>,
        date -> Nullable<Date>,
        datetime -> Nullable<Timestamptz>,
        reference -> Nullable<Text>,
        filename -> Nullable<Text>,
        filesize -> Nullable<Int8>,
        filetype -> Nullable<Text>,
        language -> Nullable<Text>,
        secret -> Nullable<Text>,
        secret_lookup -> Nullable<Text>,
        created_at -> Timestamptz,
        created_by -> Nullable<Text>,
        deleted_at -> Nullable<Timestamptz>,
        deleted_by -> Nullable<Text>,
        login_provider -> Nullable<Text>,
        type_id -> Nullable<Text>,
        audience -> Nullable<Int8>,
        level -> Nullable<Int2>,
        object_id -> Nullable<Text>,
    }
}

diesel::table! {
    audiences (db, id) {
        db -> Text,
        id -> Int8,
        sharing -> Text,
        viewers -> Array<Text>,
        noaccess -> Array<Text>,
    }
}

diesel::table! {
    request_counts (db, month) {
        db -> Text,
        month -> Date,
        count -> Int8,
    }
}

diesel::table! {
    formula_queue (id) {
        id -> Int8,
        db -> Text,
        entity_id -> Text,
        hops -> Int4,
        queued_at -> Timestamptz,
        attempts -> Int4,
        not_before -> Nullable<Timestamptz>,
        parked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    sign_in_states (id) {
        id -> Text,
        kind -> Text,
        client_ip -> Text,
        data -> Jsonb,
        expires_at -> Timestamptz,
        consumed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    idempotent_writes (db, caller, key) {
        db -> Text,
        caller -> Text,
        key -> Text,
        fingerprint -> Text,
        outcome -> Jsonb,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_consents (db, person, client_digest, redirect_uri, scope) {
        db -> Text,
        person -> Text,
        client_digest -> Text,
        redirect_uri -> Text,
        scope -> Text,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    webhooks (db, id) {
        db -> Text,
        id -> Text,
        url -> Nullable<Text>,
        events -> Array<Text>,
        entity_type -> Nullable<Text>,
        parked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_outbox (id) {
        id -> Int8,
        db -> Text,
        webhook_id -> Text,
        entity_id -> Text,
        event -> Text,
        at -> Timestamptz,
        attempts -> Int4,
        since -> Timestamptz,
        next_at -> Timestamptz,
        message_id -> Text,
    }
}

diesel::table! {
    webhook_attempts (db, id) {
        db -> Text,
        id -> Int8,
        webhook_id -> Text,
        message_id -> Text,
        event -> Text,
        attempt -> Int4,
        at -> Timestamptz,
        status -> Nullable<Int4>,
        duration_ms -> Int4,
        error -> Nullable<Text>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    audiences,
    databases,
    entities,
    idempotent_writes,
    formula_queue,
    oauth_consents,
    property_values,
    request_counts,
    sign_in_states
);
