CREATE TABLE b (auction BIGINT, pricee BIGINT, dateTime TIMESTAMP(3), WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND) WITH ('connector' = 'nexmark', 'events.num' = '100', 'kinds' = 'bid');
SELECT auction, pricee, dateTime FROM b;
