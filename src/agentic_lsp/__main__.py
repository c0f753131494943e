from agentic_lsp.cli.main import main

raise SystemExit(main())
