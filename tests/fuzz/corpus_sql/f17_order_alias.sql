SELECT page FROM clicks ORDER BY page;
