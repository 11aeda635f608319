-- The sync also pulls instant settlements (with their payouts), disputes and transfers
-- (docs/razorpay.md): each has a watermark, so the resource check admits them.
ALTER TABLE razorpay_sync_watermarks DROP CONSTRAINT razorpay_sync_watermarks_resource_check;
ALTER TABLE razorpay_sync_watermarks ADD CONSTRAINT razorpay_sync_watermarks_resource_check
    CHECK (resource IN ('payments', 'refunds', 'settlements', 'settlement_recon',
                        'instant_settlements', 'disputes', 'transfers'));
