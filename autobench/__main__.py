from autobench.cli import main

raise SystemExit(main())
