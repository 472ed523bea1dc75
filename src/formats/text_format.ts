import type { TextRequest } from "../events/text_request.ts";
import type { EnvelopeFamily } from "../http/envelopes.ts";
import type { GatewayError } from "../http/gateway_error.ts";
import type { Protocol, Provider } from "../providers/provider.ts";
import type { CatalogueModel } from "../catalogue/catalogue.ts";
import type {
  BodyDecoder,
  BodyEncoder,
  EncodeContext,
  PassThroughBody,
  PassThroughEncoder,
  StreamDecoder,
  StreamEncoder,
} from "./codec.ts";

/** Upstream protocols that can serve a call (the client's own first), and why only they. */
export interface UpstreamNeed {
  protocols: Protocol[];
  /** The 400's message when the model has a provider, but none of these protocols. */
  reason: string;
  /**
   * The need is the client's stop sequences alone: void where the model takes none, since
   * the gateway keeps them itself on any transcoded call (`keptStop`).
   */
  stopSequences?: true;
  /**
   * The need is a hosted web search alone, which an aggregator's chat API can also run (its
   * web plugin): a call the aggregator's responses API cannot take goes there.
   */
  search?: true;
  /**
   * Only the model vendor's own API serves the need: an aggregator's passes on no more than
   * it translates, and would answer the request as another one, billed.
   */
  ownApi?: true;
}

/**
 * A client-side text format (chat, messages, responses) as the pipeline sees it: one object
 * per format folder, assembled in formats/mod.ts from that folder's modules.
 */
export interface ClientFormat {
  name: "chat" | "messages" | "responses";
  envelope: EnvelopeFamily;
  /** The upstream protocol that is this very format: requests to it pass through. */
  sameProtocol: Protocol;
  /** The request field that limits the output (set when the gateway has to limit it). */
  outputLimitField: string;
  /** The error as this endpoint answers it, where the spec's list for it differs. */
  clientError?(e: GatewayError): GatewayError;
  /** Throws a 400 GatewayError naming the field. */
  validate(body: Record<string, unknown>): void;
  /** Checks that need the model (context length, image input, JSON mode). */
  checkModel(body: Record<string, unknown>, model: CatalogueModel): void;
  toInternal(body: Record<string, unknown>, slug: string): TextRequest;
  /**
   * Checks that need the model, on the internal form (`toInternal`'s, which the pipeline makes
   * once): image and file input, where the format has no check of its own on the body.
   */
  checkInternal?(req: TextRequest, model: CatalogueModel): void;
  /** The upstream protocols that can serve the call, when not every one can (built-in tools). */
  upstreamsFor(body: Record<string, unknown>): UpstreamNeed | undefined;
  /**
   * The body declares tools only the vendor's own API takes as sent (Codex's `namespace` and
   * client-run `tool_search`): an aggregator is then sent the call transcoded.
   */
  nativeToolsOnly?(body: Record<string, unknown>): boolean;
  passThroughRequest(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /**
   * Leaves the reasoning settings out of the client's own body, for a model that takes none:
   * OpenAI answers 400 to them there, and Codex sends them to every model it does not know.
   */
  dropReasoning?(body: Record<string, unknown>): void;
  /**
   * Sampling fields of the client's body (named as the catalogue's `supported_parameters`
   * names them) that are left out where the model does not take them: OpenAI answers 400 to
   * `temperature` or `logprobs` on its reasoning models, on the same call whichever of its
   * APIs serves it.
   */
  samplingFields?: readonly string[];
  createEncoder(ctx: EncodeContext): StreamEncoder;
  /**
   * What a stream sends while the upstream is silent (a model thinking before its first
   * token): a frame every client of the format reads past.
   */
  keepAlive: string;
  encodeBody: BodyEncoder;
  createPassThrough(ctx: EncodeContext): PassThroughEncoder;
  passThroughBody: PassThroughBody;
}

/** An upstream text protocol: transport details and the decoders for its answers. */
/** One call to an upstream: its body and headers. */
export interface UpstreamCall {
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** A refused call made again, mended. */
export interface MendedCall extends UpstreamCall {
  /**
   * Whether the client hears the first refusal when the mended call is refused as `again`: the
   * mend was a try of the gateway's (a beta flag the account may not have), not the client's
   * request. Otherwise (or when this is absent) it hears the mended call's.
   */
  firstStands?(again: { status: number; body: unknown }): boolean;
}

export interface UpstreamProtocol {
  name: Protocol;
  url(provider: Provider): string;
  headers(provider: Provider, client: Headers): Record<string, string>;
  /** `outputCap`: the model's output cap, for protocols that need a `max_tokens` (messages). */
  fromInternal(
    req: TextRequest,
    upstreamModel: string,
    provider: Provider,
    outputCap: number,
  ): Record<string, unknown>;
  /** Provider quirks applied to every body sent (pass-through or not). */
  finishBody?(body: Record<string, unknown>, provider: Provider): void;
  /**
   * The call to make once more after the upstream refused `sent` for something the gateway
   * can mend: encrypted reasoning of the client's history it cannot open (left out), a prompt
   * past the window the model has without a beta flag it takes (the flag added); undefined
   * when the refusal is not one of those.
   */
  mendRefused?(
    refusal: { status: number; body: unknown },
    sent: UpstreamCall,
    at: { provider: Provider; model: string },
  ): MendedCall | undefined;
  createDecoder(): StreamDecoder;
  decodeBody: BodyDecoder;
  /** `retryAfter`: seconds the upstream asked to wait (its `Retry-After`), kept for the client. */
  decodeError(status: number, body: unknown, retryAfter?: number): GatewayError;
}
