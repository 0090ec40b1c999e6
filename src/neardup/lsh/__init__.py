from .hamming import SimhashIndex, SimhashIndexFormatError, format_plan, plan_layout
