"""Reading prediction files as users hold them (the command line and the analysis use it).
"""
