"""Pure domain model: pydantic models and algorithms, no I/O.

RFC 22 idsets, RFC 29 hostlists, RFC 20 R, jobspec resources, RFC 18
eventlogs, #DW directives, DirectiveBreakdowns, rabbitmapping and JGF.
Nothing here imports celery, redis, kubernetes or httpx (import-linter
enforces it).
"""
