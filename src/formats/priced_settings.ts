/**
 * Request settings with which a vendor bills a call at other than the catalogue's prices:
 * OpenAI's `service_tier` (`priority` at up to twice the price, `flex` at half), Anthropic's
 * `service_tier` (priority capacity), `speed` (fast mode, six times the price) and
 * `inference_geo` (in-region inference, a surcharge). The gateway bills the catalogue's
 * prices, so a passed-through body goes without them and the call runs at the standard tier
 * it is billed at.
 */
const PRICED_SETTINGS = ["service_tier", "speed", "inference_geo"] as const;

/** Removes the priced settings from `body` (a copy the caller owns). */
export function withoutPricedSettings(body: Record<string, unknown>): void {
  for (const k of PRICED_SETTINGS) delete body[k];
}
