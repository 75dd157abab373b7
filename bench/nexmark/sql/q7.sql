-- NEXMark q7, highest bid: the bids whose price is the highest of a
-- 10-second window ending within 10 s after them (the published query,
-- an interval join of the bids with each window's maximum).
CREATE TABLE nexmark_q7 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  dateTime TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.dateTime, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;
