"""LLM calls: the provider-neutral conversation model and the SDK adapters.

- ``routedriver.llm.types``           Message, ToolCall, ToolSpec, Completion, Usage, the ChatModel protocol
- ``routedriver.llm.anthropic_chat``  AnthropicChat: the Anthropic Messages API
- ``routedriver.llm.openai_chat``     OpenAIChat: OpenAI Chat Completions and compatible servers
- ``routedriver.llm.errors``          LLMError and its subclasses (all exit 1)
- ``routedriver.llm.retry``           RetryPolicy, call_with_retries, Retry-After parsing
- ``routedriver.llm.env``             first_env: key and URL look-up chains

Import the submodule you need; none of them imports an SDK until a model is actually called.
"""
