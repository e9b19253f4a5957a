from uds.cli import main

raise SystemExit(main())
