/**
 * Providers-file objects for integration tests: every slug served by one provider that speaks
 * one upstream protocol, all pointed at the mock (the harness sets OPENAI_BASE_URL to
 * `<mock>/v1` and ANTHROPIC_BASE_URL to the mock root). Pass one as `startGateway({providers})`.
 */

type Protocol = "openai-chat" | "anthropic-messages" | "openai-responses";

function only(id: string, protocol: Protocol): unknown {
  const anthropic = protocol === "anthropic-messages";
  return {
    providers: [{
      id,
      protocols: [protocol],
      baseUrl: "http://unused.invalid",
      baseUrlEnv: anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL",
      keyEnv: anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY",
      priority: 1,
      serves: ["*"],
      upstreamName: "{slug}",
    }],
  };
}

/** Every slug via an openai-chat upstream (messages and responses clients are transcoded). */
export const ALL_VIA_CHAT = only("mockchat", "openai-chat");

/** Every slug via an anthropic-messages upstream (pass-through for messages clients). */
export const ALL_VIA_ANTHROPIC = only("mockanthropic", "anthropic-messages");

/** Every slug via an openai-responses upstream (pass-through for responses clients). */
export const ALL_VIA_RESPONSES = only("mockresponses", "openai-responses");
