"""Stage 1, spec: the stack file read (``stackfile``) and validated into one pydantic model (``model``:
``StackSpec`` and its parts ``base``, ``pools``, ``tenants``, ``options``; messages in ``validation``).

May import: ``components.data`` only. The rules that need derived facts live with the code they guard (plan,
render) and run through the loader (``components.cli.loader``)."""
