-- NEXMark q1, currency conversion: every bid's price in euros.  The
-- published query has DECIMAL(23, 3) and no CAST (its 0.908 is a DECIMAL
-- literal); tidemark's DECIMAL holds 18 digits, and 0.908 * price is a
-- double here, made an exact DECIMAL(18, 3) by the CAST.
CREATE TABLE nexmark_q1 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(18, 3),
  dateTime TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q1
SELECT auction, bidder, CAST(0.908 * price AS DECIMAL(18, 3)) AS price,
       dateTime, extra
FROM bid;
