"""claims"""
