"""micro"""
