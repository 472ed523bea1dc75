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

/**
 * A client-side text format (chat, messages, responses) as the pipeline sees it: one object
 * per format folder, assembled in formats/mod.ts from that folder's modules.
 */
export interface ClientFormat {
  name: "chat" | "messages" | "responses";
  envelope: EnvelopeFamily;
  /** The upstream protocol that is this very format: requests to it pass through. */
  sameProtocol: Protocol;
  /** Throws a 400 GatewayError naming the field. */
  validate(body: Record<string, unknown>): void;
  /** Checks that need the model (context length, image input, JSON mode). */
  checkModel(body: Record<string, unknown>, model: CatalogueModel): void;
  toInternal(body: Record<string, unknown>, slug: string): TextRequest;
  /** A reason the call needs an upstream of the same protocol (built-in tools), or undefined. */
  needsSameProtocol(body: Record<string, unknown>): string | undefined;
  passThroughRequest(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  createEncoder(ctx: EncodeContext): StreamEncoder;
  encodeBody: BodyEncoder;
  createPassThrough(ctx: EncodeContext): PassThroughEncoder;
  passThroughBody: PassThroughBody;
}

/** An upstream text protocol: transport details and the decoders for its answers. */
export interface UpstreamProtocol {
  name: Protocol;
  url(provider: Provider): string;
  headers(provider: Provider, client: Headers): Headers;
  fromInternal(
    req: TextRequest,
    upstreamModel: string,
    provider: Provider,
  ): Record<string, unknown>;
  /** Provider quirks applied to every body sent (pass-through or not). */
  finishBody?(body: Record<string, unknown>, provider: Provider): void;
  createDecoder(): StreamDecoder;
  decodeBody: BodyDecoder;
  decodeError(status: number, body: unknown): GatewayError;
}
