from agentic_lsp.cli import main

raise SystemExit(main())
