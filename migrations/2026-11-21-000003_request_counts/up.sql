-- API requests per database and UTC calendar month (for the usage object).
CREATE TABLE request_counts (
    db    text   NOT NULL REFERENCES databases (name),
    month date   NOT NULL,
    count bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (db, month)
);
