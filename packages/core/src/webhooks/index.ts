export { DELIVERY_LEASE, type DeliveryLease, dispatchNewEvents, sweepWebhookDeliveries } from './delivery.ts';
