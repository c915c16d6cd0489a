import sys

from spikeport.cli import main

sys.exit(main())
