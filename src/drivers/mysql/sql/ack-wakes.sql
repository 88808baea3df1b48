-- A client's poller: the wake-ups it has dispatched (by id: a lower id
-- still being committed must not go unread). ? client id, ids.
DELETE FROM baton_wakes WHERE client = ? AND id IN (?)
