-- ddl.sql - NEXMark's three streams for `tidemark sql`, one table each:
--
--   tidemark sql -i bench/nexmark/sql/ddl.sql bench/nexmark/sql/q7.sql
--
-- nexmark-flink declares one `datagen` table of ROW-typed events and a
-- view per stream over it (person, auction, bid).  tidemark has neither
-- ROW columns nor views yet, so, as the one documented change to the
-- benchmark's DDL, each stream is a table of its own reading only its
-- kind of event from the same generator (ids and times are those of the
-- whole stream, as through the view); the queries themselves are the
-- published ones.  The generator makes no `extra` text: it is null.
-- The watermark is exactly the highest time so far minus 4 s.

CREATE TABLE person (
    id BIGINT,
    name VARCHAR,
    emailAddress VARCHAR,
    creditCard VARCHAR,
    city VARCHAR,
    state VARCHAR,
    dateTime TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'kinds' = 'person',
    'events.num' = '50000000',
    'first-event.rate' = '100000',
    'partitions' = '4'
);

CREATE TABLE auction (
    id BIGINT,
    itemName VARCHAR,
    description VARCHAR,
    initialBid BIGINT,
    reserve BIGINT,
    dateTime TIMESTAMP(3),
    expires TIMESTAMP(3),
    seller BIGINT,
    category BIGINT,
    extra VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'kinds' = 'auction',
    'events.num' = '50000000',
    'first-event.rate' = '100000',
    'partitions' = '4'
);

CREATE TABLE bid (
    auction BIGINT,
    bidder BIGINT,
    price BIGINT,
    channel VARCHAR,
    url VARCHAR,
    dateTime TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'kinds' = 'bid',
    'events.num' = '50000000',
    'first-event.rate' = '100000',
    'partitions' = '4'
);
