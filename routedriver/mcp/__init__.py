"""MCP both ways: ``route.mcp`` serves the route driver to any MCP client, and bhrain uses MCP servers' tools.

- ``route_tools``: the tools ``route.mcp`` serves, as data (name, description, input schema, handler) over
  ``routedriver.route``; each answer is what the matching ``route.*`` command prints and exits with.
- ``handshake``: ``route.mcp``'s answers to ``initialize`` and ``tools/list``, given before the SDK loads.
- ``server``: those tools (and each stone's ``.stone`` file as a resource) over the SDK's stdio server,
  with progress reports and cancellation.
- ``servers_config``: the ``mcpServers`` block (``.mcp.json`` shape) bhrain reads, validated whole.
- ``client``: bhrain's side: starts the configured stdio servers and turns their tools into toolboxes.

Only ``server`` and ``client`` import the ``mcp`` SDK (about 0.7 s), and only the commands that use MCP
import them: no other ``route.*`` command, and no bhrain run without MCP servers, pays for it.
"""
