-- Payment links (issue 46, defect 7): a link's use is an order of it that is PAID, no longer any order that
-- did not end EXPIRED (anonymous visits took uses until their orders expired, closing the link to paying
-- customers). A link's uses are counted at every visit, on its page and in lists, so the count reads this
-- index of its paid orders only, not every order its visitors ever opened.
CREATE INDEX orders_payment_link_paid_idx ON orders (payment_link_id) WHERE status = 'PAID' AND payment_link_id IS NOT NULL;
