-- Sessions per user with a 10 s gap (the group-window syntax): f@59999
-- opens [59999, 69999), not late.
SELECT `user`, SESSION_START(ts, INTERVAL '10' SECOND) AS s,
       SESSION_END(ts, INTERVAL '10' SECOND) AS e, COUNT(*) AS n
FROM clicks
GROUP BY `user`, SESSION(ts, INTERVAL '10' SECOND);
